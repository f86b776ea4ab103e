(function(){
  'use strict';
  // The claims are data (html.py's claim_data): every text a number into data.texts. Cards are
  // built with textContent only, and only those a reader can see (PAGE at a time).
  var data=JSON.parse(document.getElementById('report-data').textContent);
  var T=data.texts,claims=data.claims,PAGE=100;
  var main=document.getElementById('claims'),more=document.getElementById('more');
  var search=document.getElementById('search'),group=document.getElementById('group');
  var sort=document.getElementById('sort'),shownCount=document.getElementById('shown');
  var radios=document.querySelectorAll('input[name="show"]');
  var SHOWS={
    all:null,passed:['passed'],failed:['failed'],inconclusive:['inconclusive'],
    'not-upheld':['by-call-not-upheld'],'by-call':['by-call-upheld','by-call-not-upheld'],
    'judge-errors':['error'],failures:['failed','inconclusive']
  };
  var ALIASES={errors:'judge-errors'};
  var RANK={failed:0,inconclusive:1,error:2,'by-call-not-upheld':3,passed:4,'by-call-upheld':5};
  var state={show:'all',query:'',limit:PAGE};
  var hays=new Array(claims.length);

  function hay(i){
    var h=hays[i];
    if(h===undefined){
      var c=claims[i],parts=[T[c.t],T[c.c]];
      if(c.r){for(var k=1;k<c.r.length;k+=2){parts.push(T[c.r[k]]);}}
      if(c.e!==undefined){parts.push(T[c.e]);}
      h=hays[i]=parts.join('\n').toLowerCase();
    }
    return h;
  }
  function keep(c,i){
    var shows=SHOWS[state.show];
    if(shows&&shows.indexOf(T[c.f])<0){return false;}
    return !state.query||hay(i).indexOf(state.query)>=0;
  }
  function ordered(){
    var list=[],i;
    for(i=0;i<claims.length;i++){if(keep(claims[i],i)){list.push(i);}}
    var how=sort.value,key=null;
    if(how==='result'){key=function(i){var r=RANK[T[claims[i].f]];return r===undefined?9:r;};}
    else if(how==='score'){key=function(i){var v=claims[i].v;return v===undefined?99:v;};}
    if(key){list.sort(function(a,b){return key(a)-key(b)||a-b;});}
    else if(how==='test'){list.sort(function(a,b){var x=T[claims[a].t],y=T[claims[b].t];return x<y?-1:x>y?1:a-b;});}
    if(group.checked){
      // One test's claims together, the tests in the order their first claim comes.
      var first={},place=[];
      for(i=0;i<list.length;i++){var t=claims[list[i]].t;if(first[t]===undefined){first[t]=i;}place[list[i]]=i;}
      list.sort(function(a,b){return first[claims[a].t]-first[claims[b].t]||place[a]-place[b];});
    }
    return list;
  }
  function el(tag,cls,text){
    var e=document.createElement(tag);
    if(cls){e.className=cls;}
    if(text!==undefined){e.textContent=text;}
    return e;
  }
  function contextOf(c){
    var box=el('details','context'),messages=c.x;
    box.appendChild(el('summary',null,"Context the judge saw ("+messages.length+(messages.length===1?' message)':' messages)')));
    box.addEventListener('toggle',function(){
      if(!box.open||box.getAttribute('data-filled')){return;}
      box.setAttribute('data-filled','1');
      for(var m=0;m<messages.length;m++){
        var parts=messages[m][1],text=[];
        for(var p=0;p<parts.length;p++){text.push(T[parts[p]]);}
        box.appendChild(el('h4',null,T[messages[m][0]]));
        box.appendChild(el('pre',null,text.join('\n\n')));
      }
    });
    return box;
  }
  function runsOf(u){
    var box=el('div','runs'),head=el('p');
    head.appendChild(el('b',null,u.decision));
    head.appendChild(document.createTextNode(': '+u.rule+'; '+u.figures+'. Decided by: '+u.decided_by));
    box.appendChild(head);
    box.appendChild(el('p','about','Decision about: '+u.about));
    var more=el('details'),table=el('table'),row=el('tr');
    more.appendChild(el('summary',null,u.count+' runs'));
    var heads=['run','verdict','justification'];
    if(u.referee){heads.push('referee '+u.referee,"referee's justification");}
    for(var h=0;h<heads.length;h++){row.appendChild(el('th',null,heads[h]));}
    table.appendChild(row);
    for(var r=0;r<u.rows.length;r++){
      var run=u.rows[r],tr=el('tr','run');
      tr.setAttribute('data-held',run.held_attr==='true'?'true':'false');
      tr.appendChild(el('td',null,run.run));
      tr.appendChild(el('td',null,run.value+' ('+run.held+')'+run.control));
      tr.appendChild(el('td',null,run.justification));
      if(run.referee){tr.appendChild(el('td','referee',run.referee.value));tr.appendChild(el('td',null,run.referee.justification));}
      table.appendChild(tr);
    }
    more.appendChild(table);
    box.appendChild(more);
    return box;
  }
  function card(i){
    var c=claims[i],box=el('section','claim '+T[c.s]);
    box.setAttribute('data-status',T[c.f]);
    box.appendChild(el('div','status',T[c.w]));
    box.appendChild(el('div','test',T[c.t]));
    box.appendChild(el('div','text',T[c.c]));
    if(c.e!==undefined){box.appendChild(el('pre',null,T[c.e]));return box;}
    var list=el('dl');
    for(var k=0;k<c.r.length;k+=2){list.appendChild(el('dt',null,T[c.r[k]]));list.appendChild(el('dd',null,T[c.r[k+1]]));}
    box.appendChild(list);
    if(c.n!==undefined){
      var why=el('details','reasoning');
      why.appendChild(el('summary',null,"The judge's reasoning"));
      why.appendChild(el('pre',null,T[c.n]));
      box.appendChild(why);
    }
    if(c.u){box.appendChild(runsOf(c.u));}
    if(c.x){box.appendChild(contextOf(c));}
    else{box.appendChild(el('p','meta','No judge request was recorded for this claim.'));}
    return box;
  }
  function render(){
    var list=ordered(),shown=Math.min(list.length,state.limit),frag=document.createDocumentFragment();
    var counts={},last=null,i;
    if(group.checked){for(i=0;i<list.length;i++){var t=claims[list[i]].t;counts[t]=(counts[t]||0)+1;}}
    for(i=0;i<shown;i++){
      var c=claims[list[i]];
      if(group.checked&&c.t!==last){
        last=c.t;
        var head=el('h3','group',T[c.t]+' ');
        head.appendChild(el('span',null,'('+counts[c.t]+(counts[c.t]===1?' claim)':' claims)')));
        frag.appendChild(head);
      }
      frag.appendChild(card(list[i]));
    }
    main.textContent='';
    main.appendChild(frag);
    shownCount.textContent=String(list.length);
    more.hidden=shown>=list.length;
    more.textContent='Show '+Math.min(PAGE,list.length-shown)+' more ('+(list.length-shown)+' not shown yet)';
  }
  function show(which){
    which=ALIASES[which]||which;
    if(!SHOWS.hasOwnProperty(which)){which='all';}
    state.show=which;
    for(var j=0;j<radios.length;j++){radios[j].checked=radios[j].value===which;}
  }
  function again(){state.limit=PAGE;render();}
  for(var k=0;k<radios.length;k++){
    radios[k].addEventListener('change',function(e){
      show(e.target.value);history.replaceState(null,'','#'+state.show);again();
    });
  }
  search.addEventListener('input',function(){state.query=search.value.trim().toLowerCase();again();});
  group.addEventListener('change',again);
  sort.addEventListener('change',again);
  more.addEventListener('click',function(){state.limit+=PAGE;render();});
  window.addEventListener('hashchange',function(){show(location.hash.slice(1));again();});
  show((location.hash||'#all').slice(1));
  render();
  document.body.setAttribute('data-ready','1');
})();
