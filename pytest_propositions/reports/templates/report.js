(function(){
  var radios=document.querySelectorAll('input[name="show"]');
  function apply(which){
    var claims=document.querySelectorAll('.claim'),shown=0;
    for(var i=0;i<claims.length;i++){
      var s=claims[i].getAttribute('data-status');
      var keep=which==='all'||(which==='failures'&&(s==='failed'||s==='not-upheld'))||(which==='errors'&&s==='error');
      if(keep){claims[i].removeAttribute('hidden');shown++;}else{claims[i].setAttribute('hidden','');}
    }
    document.getElementById('shown').textContent=String(shown);
    for(var j=0;j<radios.length;j++){radios[j].checked=radios[j].value===which;}
  }
  for(var k=0;k<radios.length;k++){
    radios[k].addEventListener('change',function(e){
      apply(e.target.value);history.replaceState(null,'','#'+e.target.value);
    });
  }
  var start=(location.hash||'#all').slice(1);
  apply(['all','failures','errors'].indexOf(start)>=0?start:'all');
  document.body.setAttribute('data-ready','1');
})();
